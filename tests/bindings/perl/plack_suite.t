# Plack's own server conformance suite (the one Starman and Twiggy run) against Plack::Handler::CSGI.
use strict;
use warnings;
use Test::More;

eval { require Plack::Test::Suite; 1 } or plan skip_all => 'Plack::Test::Suite (libplack-perl) is not installed';

Plack::Test::Suite->run_server_tests('CSGI');
done_testing;
