"""DVC entry point of the `params` stage: validate params.yaml (pearl.params)."""

from pearl.cli import main

if __name__ == "__main__":  # worker processes re-import this file
    main(["params"])
