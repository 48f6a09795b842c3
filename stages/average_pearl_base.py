"""DVC entry point of the `average_pearl_base` stage; the logic lives in pearl.pearl_base."""

from pearl.cli import main

if __name__ == "__main__":
    main(["average-pearl-base"])
