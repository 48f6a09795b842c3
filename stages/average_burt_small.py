"""DVC entry point of the `average_burt_small` stage; the logic lives in pearl.burt_small."""

from pearl.cli import main

if __name__ == "__main__":
    main(["average-burt-small"])
