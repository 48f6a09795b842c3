"""DVC entry point of the `corpus` stage; the logic lives in pearl.corpus."""

from pearl.cli import main

if __name__ == "__main__":  # worker processes re-import this file
    main(["corpus"])
