# Empty dependencies file for csgi-bundle-serve.
# This may be replaced when dependencies are built.
