"""DVC entry point of the `typing` stage; the logic lives in pearl.entity_typing.

(Not named typing.py: a script's folder comes first on sys.path and would shadow the stdlib.)
"""

from pearl.cli import main

if __name__ == "__main__":  # worker processes re-import this file
    main(["typing"])
