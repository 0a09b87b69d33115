"""``python -m waypost.cli``."""

from waypost.cli import main

if __name__ == "__main__":
    main()
