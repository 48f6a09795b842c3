"""DVC entry point of the `average` stage; the logic lives in pearl.train."""

from pearl.cli import main

if __name__ == "__main__":
    main(["average"])
