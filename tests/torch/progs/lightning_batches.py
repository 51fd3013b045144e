"""tests/torch/progs/lightning_batches.py: a real lightning.pytorch Trainer (accelerator="gpu",
the simulated device) fitting a linear model on batches a DataLoader makes on the host, with
pin_memory=False (the default) or, with --pin, pin_memory=True. Lightning moves each batch to the
device itself (lightning/fabric/utilities/apply_func.py, non_blocking=True): from pageable memory
that copy waits, from pinned memory it does not. The training step itself never syncs. With
--log, training_step also calls self.log("loss", loss): Lightning moves the metric's state to the
device with the same move_data_to_device (once, when the name is first logged) and the logged
metrics back to the CPU at teardown; neither is a batch transfer.

    python lightning_batches.py STEPS [--pin] [--log]"""
import sys

import torch
import lightning.pytorch as L
from torch.utils.data import DataLoader, TensorDataset


class Linear(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(16, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        if "--log" in sys.argv:
            self.log("loss", loss)  # sync: log
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    steps = int(sys.argv[1])
    data = TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=8, pin_memory="--pin" in sys.argv)
    trainer = L.Trainer(accelerator="gpu", devices=1, max_steps=steps, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Linear(), loader)  # sync: fit
    print("done", flush=True)


if __name__ == "__main__":
    main()
