package DiffApp;
# The application catalyst.pl generates (catalyst.pl DiffApp), trimmed to what Debian 12 packages: no
# -Debug, ConfigLoader or Static::Simple (the static file is served by the Root controller) and no
# RenderView end action. tests/bindings/perl/catalyst.t serves it under several servers.
use Moose;
use namespace::autoclean;

use Catalyst::Runtime 5.80;
use Catalyst;
use File::Basename qw(dirname);
use File::Spec;

extends 'Catalyst';

our $VERSION = '0.01';

__PACKAGE__->config(
    name => 'DiffApp',
    disable_component_resolution_regex_fallback => 1,
    enable_catalyst_header => 1,
    encoding => 'UTF-8',
    home => File::Spec->rel2abs(dirname(__FILE__) . '/..'),  # no Makefile.PL here to find it by
);

__PACKAGE__->setup();

1;
