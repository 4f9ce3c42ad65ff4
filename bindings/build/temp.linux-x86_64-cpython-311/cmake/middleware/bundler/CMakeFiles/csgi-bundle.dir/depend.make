# Empty dependencies file for csgi-bundle.
# This may be replaced when dependencies are built.
