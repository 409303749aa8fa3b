"""Floor 3: what any fit of a folder does before it counts a word, at its least: start
Python, import numpy, list the files and read each with one open, one read and a close,
on every core: one process a core, each listing and reading every n-th class folder (no
list is shared across a fork, whose copied pages would cost more than the reading).
Usage: floor_start.py DIR"""

import os
import sys

import numpy  # noqa: F401  (every fit counts with numpy)


def files(root: str) -> list[str]:
    found, folders = [], [root]
    while folders:
        with os.scandir(folders.pop()) as listing:
            for entry in listing:
                if entry.is_file():
                    found.append(entry.path)
                elif entry.is_dir():
                    folders.append(entry.path)
    return sorted(found)


def read_share(root: str, k: int, n: int) -> int:
    total = 0
    for folder in sorted(os.listdir(root))[k::n]:
        for path in files(os.path.join(root, folder)):
            fd = os.open(path, os.O_RDONLY)
            try:
                while chunk := os.read(fd, 1 << 16):
                    total += len(chunk)
            finally:
                os.close(fd)
    return total


cores = len(os.sched_getaffinity(0))
children = []
for k in range(1, cores):
    pid = os.fork()
    if pid == 0:
        read_share(sys.argv[1], k, cores)
        os._exit(0)
    children.append(pid)
read_share(sys.argv[1], 0, cores)
for pid in children:
    os.waitpid(pid, 0)
