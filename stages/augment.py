"""DVC entry point of the `augment` stage; the logic lives in pearl.augment."""

from pearl.cli import main

if __name__ == "__main__":
    main(["augment"])
