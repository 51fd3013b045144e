"""tests/torch/progs/fork_threads.py: three threads train on the device (a .item() sync in each
iteration) while the main thread forks: os.fork() children (each raises and catches a C++
exception through torch, whose unwinding takes the loader's lock, then ends with a status of its
own), a multiprocessing pool and DataLoader workers, both started with "fork". Prints what the
children gave back."""
import multiprocessing
import os
import threading

import torch

stop = threading.Event()


def trainer(k, trained):
    torch.manual_seed(k)
    model = torch.nn.Linear(8, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8, device="cuda")
    i = 0
    while not stop.is_set():
        loss = model(x).square().mean()
        loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        i += 1
        if i == 3:
            trained.set()


def square(v):
    return v * v


class Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor(i * i)


def forked_child(i):
    try:
        torch.zeros(2)[5]  # c10::IndexError, thrown and caught in C++ first
    except IndexError:
        pass
    os._exit(10 + i)


def main():
    trained = [threading.Event() for _ in range(3)]
    threads = [threading.Thread(target=trainer, args=(k, trained[k]), name=f"trainer{k}")
               for k in range(3)]
    for t in threads:
        t.start()
    for e in trained:
        e.wait()
    statuses = []
    for i in range(6):
        pid = os.fork()
        if pid == 0:
            forked_child(i)
        statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    print("os.fork children:", statuses)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print("pool:", pool.map(square, range(8)))
    loader = torch.utils.data.DataLoader(Squares(), batch_size=4, num_workers=2,
                                         multiprocessing_context="fork")
    print("loader:", [b.tolist() for b in loader])
    stop.set()
    for t in threads:
        t.join()
    print("trainers joined")


if __name__ == "__main__":
    main()
