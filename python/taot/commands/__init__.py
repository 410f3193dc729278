# The front end's commands, one module each (taot.cli is their table).
