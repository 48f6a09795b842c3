"""DVC entry point of the `figure4` stage; the logic lives in pearl.experiments.tsne."""

from pearl.cli import main

if __name__ == "__main__":
    main(["figure4"])
