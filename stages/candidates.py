"""DVC entry point of the `candidates` stage; the logic lives in pearl.negatives."""

from pearl.cli import main

if __name__ == "__main__":
    main(["candidates"])
