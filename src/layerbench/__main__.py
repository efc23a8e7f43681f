"""`python -m layerbench` runs the command line."""

from layerbench.cli.main import main

if __name__ == "__main__":
    main()
