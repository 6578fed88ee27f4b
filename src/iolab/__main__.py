"""`python -m iolab` runs the CLI."""

from iolab.cli.main import main

if __name__ == "__main__":
    main()
