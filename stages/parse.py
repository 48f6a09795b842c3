"""DVC entry point of the `parse` stage; the logic lives in pearl.parse."""

from pearl.cli import main

if __name__ == "__main__":  # worker processes re-import this file
    main(["parse"])
