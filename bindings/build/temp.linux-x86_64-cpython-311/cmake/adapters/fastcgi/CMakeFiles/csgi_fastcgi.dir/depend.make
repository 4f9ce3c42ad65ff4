# Empty dependencies file for csgi_fastcgi.
# This may be replaced when dependencies are built.
