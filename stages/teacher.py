"""DVC entry point of the `teacher` stage; the logic lives in pearl.teacher."""

from pearl.cli import main

if __name__ == "__main__":
    main(["teacher"])
