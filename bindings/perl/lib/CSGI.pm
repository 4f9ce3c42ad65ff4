package CSGI;
# The Perl side of csgi's PSGI host: CSGI::serve (used by Plack::Handler::CSGI), and the request driver
# the host's perl thread calls for each request (_handle). The classes CSGI::Request, CSGI::Writer,
# CSGI::Input and CSGI::Errors are defined by the module's XS part (src/psgi_host.cpp).
use strict;
use warnings;
use File::Spec;

our $VERSION = '0.1.0';

# `csgi serve --psgi` defines the XSUBs in the interpreter it starts; a perl loading this file loads them.
unless (defined &CSGI::_serve) {
    require XSLoader;
    XSLoader::load('CSGI', $VERSION);
}

# Serves $app with csgi's server and the command line of `csgi serve` (@argv: --listen, --workers, ...)
# until it is stopped (SIGTERM: gracefully); returns the exit status.
sub serve {
    my ($app, @argv) = @_;
    my $workers = 0;
    for my $i (0 .. $#argv) {
        if ($argv[$i] =~ /^(?:--workers|-w)$/) { $workers = $argv[$i + 1] || 0 }
        elsif ($argv[$i] =~ /^--workers=(\d+)$/) { $workers = $1 }
    }
    return _serve($app, \@argv, $workers > 0);
}

# A csgi app library (CSGI_APP) as a PSGI app: CSGI->load_app("libapp.so", @app_args).
sub load_app {
    my ($class, $path, @args) = @_;
    my $app = _load_app($path, \@args);
    return sub { $app->call($_[0]) };
}

# The app of a .psgi file: the value of its last statement, evaluated in a package of its own.
sub _load_psgi {
    my $file = File::Spec->rel2abs(shift);
    (my $package = $file) =~ s/([^A-Za-z0-9_])/sprintf('_%02x', ord $1)/ge;
    local $0 = $file;
    my $app = eval "package CSGI::PSGIFile::$package; do \$file or die(\$@ || \"\$!\\n\")";
    die "cannot load $file: $@" if !$app;
    die "$file returns no code reference but " . (ref $app || $app) . "\n"
        unless ref $app eq 'CODE' || (Scalar::Util::blessed($app) && overload::Method($app, '&{}'));
    return $app;
}

sub _handle {
    my ($app, $env, $req) = @_;
    $env->{'psgix.cleanup'} = 1;
    $env->{'psgix.cleanup.handlers'} = [];
    $env->{'psgix.informational'} = sub { $req->informational(@_) } if $req->informational_offered;
    $env->{'psgix.logger'} = sub { $req->log($_[0]{level}, $_[0]{message}) };
    $env->{'psgix.io'} = CSGI::IO->new($req) if $req->io_offered;
    my $res;
    if (!eval { $res = $app->($env); 1 }) {
        $req->fail($@ eq '' ? "died\n" : "$@");
    } elsif (ref $res eq 'CODE') {
        eval { $res->(sub { _respond($req, $env, $_[0]) }); 1 } or $req->fail("$@");
    } else {
        eval { _respond($req, $env, $res); 1 } or $req->fail("$@");
    }
    for my $handler (@{ $env->{'psgix.cleanup.handlers'} || [] }) {
        eval { $handler->($env); 1 } or $env->{'psgi.errors'}->print("psgix.cleanup handler: $@");
    }
    return;
}

# [status, headers, body] answers now; [status, headers] returns the writer of a streamed body.
sub _respond {
    my ($req, $env, $res) = @_;
    $req->harakiri if $env->{'psgix.harakiri.commit'};
    die "the response is no [status, headers] or [status, headers, body] array reference\n"
        unless ref $res eq 'ARRAY' && (@$res == 2 || @$res == 3);
    my ($status, $headers, $body) = @$res;
    return $req->start($status, $headers) if @$res == 2;
    if (ref $body eq 'ARRAY') {
        $req->respond($status, $headers, join '', map { defined $_ ? $_ : '' } @$body);
        return;
    }
    die "the response body is neither an array reference nor an object with getline and close\n"
        unless ref $body && (Scalar::Util::reftype($body) eq 'GLOB' || Scalar::Util::blessed($body));
    my $fd = Scalar::Util::reftype($body) eq 'GLOB' ? fileno($body) : undef;
    if (defined $fd && $fd >= 0 && -f $body) {
        my $at = tell $body;
        $req->respond_file($status, $headers, $fd, $at < 0 ? 0 : $at);
        $body->close;
        return;
    }
    my $writer = $req->start($status, $headers);
    local $/ = \65536;
    while (defined(my $chunk = $body->getline)) {
        next if $chunk eq '';
        last unless $writer->write($chunk);
    }
    $body->close;
    $writer->close;
    return;
}

sub CSGI::Errors::printf {
    my ($self, $format, @args) = @_;
    return $self->print(sprintf $format, @args);
}

require Scalar::Util;
require overload;
require CSGI::IO;

1;
