"""scripts/dev-install.py VENV_PYTHON: installs python/ (the syncspy package) into the venv of
VENV_PYTHON the way an editable install does, without a build backend or a download: a
syncspy.pth naming python/ and a syncspy-<version>.dist-info holding the METADATA and the entry
points (pytest11: the pytest plugin) of python/pyproject.toml, so importlib.metadata, pytest and
`pip show`/`pip uninstall` see the package. Run with the venv's own Python (3.11+: tomllib)."""
import os
import shutil
import sys
import sysconfig
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(ROOT, "python")


def main():
    with open(os.path.join(PACKAGE_DIR, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    name, version = project["name"], project["version"]
    site = sysconfig.get_paths()["purelib"]
    dist = os.path.join(site, "%s-%s.dist-info" % (name, version))
    for entry in os.listdir(site):  # an earlier version's
        if entry.startswith(name + "-") and entry.endswith(".dist-info"):
            shutil.rmtree(os.path.join(site, entry))
    os.makedirs(dist)
    files = {
        "METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
                    % (name, version, project.get("description", ""), project.get("requires-python", "")),
        "INSTALLER": "syncspy-dev-install\n",
        "entry_points.txt": "".join(
            "[%s]\n%s\n" % (group, "".join("%s = %s\n" % kv for kv in sorted(points.items())))
            for group, points in sorted(project.get("entry-points", {}).items())),
        "direct_url.json": '{"url": "file://%s", "dir_info": {"editable": true}}\n' % PACKAGE_DIR,
    }
    for fname, text in files.items():
        with open(os.path.join(dist, fname), "w") as f:
            f.write(text)
    pth = os.path.join(site, "%s.pth" % name)
    with open(pth, "w") as f:
        f.write(PACKAGE_DIR + "\n")
    rel = os.path.basename(dist)
    with open(os.path.join(dist, "RECORD"), "w") as f:
        for fname in sorted(files) + ["RECORD"]:
            f.write("%s/%s,,\n" % (rel, fname))
        f.write("%s.pth,,\n" % name)
    print("dev-install: %s %s -> %s (editable, from %s)" % (name, version, site, PACKAGE_DIR), file=sys.stderr)


if __name__ == "__main__":
    main()
