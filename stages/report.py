"""DVC entry point of the `report` stage; the logic lives in pearl.report."""

from pearl.cli import main

if __name__ == "__main__":
    main(["report"])
