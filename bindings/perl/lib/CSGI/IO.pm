package CSGI::IO;
# psgix.io: the client's connection as a file handle, for apps that speak their own protocol on it after
# the request (spec/psgi.md). The handle is a glob tied to this class until its first use: then the server
# hands the socket over (CSGI::Request::take_io, csgix.io), the glob is untied and opened on it, and every
# operation from then on is the socket's own. Bytes the client sent past the request are put back into the
# handle's buffer, where read, readline and getc find them first (sysread does not).
use strict;
use warnings;

sub new {
    my ($class, $req) = @_;
    my $fh = \do { no warnings 'once'; local *CONNECTION };
    tie *$fh, $class, $req, $fh;
    return $fh;
}

sub TIEHANDLE {
    my ($class, $req, $fh) = @_;
    my $self = bless { req => $req, fh => $fh }, $class;
    Scalar::Util::weaken($self->{fh});
    return $self;
}

# The socket, taken on the first use; dies when the server cannot hand it over (the response began).
# The bytes past the request go into the handle's buffer, or to $$keep when given.
sub _open {
    my ($self, $keep) = @_;
    my $fh = $self->{fh};
    my ($fd, $pending) = $self->{req}->take_io;
    die "psgix.io: the server cannot hand the connection over now\n" unless defined $fd;
    undef $self->{req};
    no warnings 'untie';
    untie *$fh;
    open(*$fh, '+<&=', $fd) or die "psgix.io: cannot open the connection's descriptor: $!\n";
    binmode *$fh;
    select((select(*$fh), $| = 1)[0]);
    if ($keep) { $$keep = $pending } else { $fh->ungetc(ord $_) for reverse split //, $pending }
    return $fh;
}

sub FILENO   { fileno $_[0]->_open }
sub WRITE    { my $self = shift; syswrite $self->_open, $_[0], $_[1] // length $_[0], $_[2] // 0 }
sub PRINT    { my $self = shift; print { $self->_open } @_ }
sub PRINTF   { my $self = shift; printf { $self->_open } @_ }
# As sysread: the bytes past the request, if any (the rest back into the buffer), else one read.
sub READ {
    my $self = shift;
    my $fh = $self->_open(\my $pending);
    return sysread $fh, $_[0], $_[1], $_[2] // 0 if $pending eq '';
    my $got = substr $pending, 0, $_[1], '';
    $_[0] = '' unless defined $_[0];
    substr($_[0], $_[2] // 0) = $got;
    $fh->ungetc(ord $_) for reverse split //, $pending;
    return length $got;
}
sub READLINE { my $fh = $_[0]->_open; wantarray ? <$fh> : scalar <$fh> }
sub GETC     { getc $_[0]->_open }
sub EOF      { eof $_[0]->_open }
sub BINMODE  { 1 }
sub CLOSE    { close $_[0]->_open }

require Scalar::Util;
require IO::Handle;

1;
