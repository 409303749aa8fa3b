"""Floor 2: read, decode, lower-case and tokenize every file with one compiled regex, in
one Python process on one core, without counting. Usage: floor_regex.py DIR"""

import os
import re
import sys

findall = re.compile(r"(?u)\b\w\w+\b").findall
tokens = 0
for dirpath, dirnames, filenames in os.walk(sys.argv[1]):
    dirnames.sort()
    for name in sorted(filenames):
        with open(os.path.join(dirpath, name), "rb") as handle:
            tokens += len(findall(handle.read().decode("utf-8", "replace").lower()))
print(tokens)
