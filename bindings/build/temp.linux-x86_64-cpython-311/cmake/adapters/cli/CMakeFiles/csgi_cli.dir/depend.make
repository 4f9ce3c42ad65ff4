# Empty dependencies file for csgi_cli.
# This may be replaced when dependencies are built.
