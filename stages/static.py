"""DVC entry point of the `static` stage; the logic lives in pearl.static."""

from pearl.cli import main

if __name__ == "__main__":
    main(["static"])
