"""Floor 1: read every file of a folder (bytes, no decoding). Usage: floor_read.py DIR"""

import os
import sys

total = 0
for dirpath, dirnames, filenames in os.walk(sys.argv[1]):
    dirnames.sort()
    for name in sorted(filenames):
        with open(os.path.join(dirpath, name), "rb") as handle:
            total += len(handle.read())
print(total)
