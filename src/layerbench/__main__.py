"""`python -m layerbench` runs the command line."""

from layerbench.cli import main

if __name__ == "__main__":
    main()
