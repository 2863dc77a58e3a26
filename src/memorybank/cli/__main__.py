"""``python -m memorybank.cli``: the same as the ``memorybank`` script."""

from memorybank.cli import main

if __name__ == "__main__":
    main()
