package Plack::Handler::CSGI;
# plackup -s CSGI app.psgi: serves a PSGI app with csgi's HTTP/1.1 server (docs/perl.md).
use strict;
use warnings;
use CSGI;

our $VERSION = $CSGI::VERSION;

sub new {
    my ($class, %args) = @_;
    return bless {%args}, $class;
}

# plackup's --host/--port/--listen/--socket, --workers and --threads become csgi serve's options; any
# other csgi serve option goes in csgi_options (plackup -s CSGI --csgi_options '--access-log -').
sub run {
    my ($self, $app) = @_;
    my @listen = @{ $self->{listen} || [] };
    push @listen, $self->{socket} if defined $self->{socket} && !grep { $_ eq $self->{socket} } @listen;
    if (!@listen) {
        my $host = $self->{host};
        my $port = defined $self->{port} ? $self->{port} : 5000;
        push @listen, !defined $host ? ":$port" : $host =~ /:/ ? "[$host]:$port" : "$host:$port";
    }
    my @argv = map { ('--listen', m{^/} ? "unix:$_" : $_) } @listen;
    push @argv, '--workers', $self->{workers} if $self->{workers};
    push @argv, '--threads', $self->{threads} if $self->{threads};
    push @argv, split ' ', $self->{csgi_options} if defined $self->{csgi_options};
    if (my $ready = $self->{server_ready}) {
        my ($host, $port) = $listen[0] =~ /^\[?(.*?)\]?:(\d+)$/ ? ($1, $2) : ($listen[0], undef);
        $ready->({ host => $host || '0.0.0.0', port => $port, server_software => 'CSGI' });
    }
    return CSGI::serve($app, @argv);
}

1;
