"""``python -m nbclass``: the same as the ``nbclass`` command."""

from .cli.entry import main

if __name__ == "__main__":
    main()
