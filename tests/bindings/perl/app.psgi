# The PSGI app tests/bindings/perl/psgi_host.t serves with csgi serve --psgi: one path per behaviour.
use strict;
use warnings;
use IO::File;
use Plack::Util;

my @cleaned;    # what psgix.cleanup handlers ran (per worker process)
my $closed = 0; # how many getline bodies the server closed

{
    package GetlineBody;
    sub new { my ($class, @lines) = @_; bless { lines => [@lines] }, $class }
    sub getline { my $self = shift; shift @{ $self->{lines} } }
    sub close { $closed++ }
}

my %routes = (
    '/env' => sub {
        my $env = shift;
        my @keys = qw(REQUEST_METHOD SCRIPT_NAME PATH_INFO QUERY_STRING REQUEST_URI SERVER_NAME SERVER_PORT
            SERVER_PROTOCOL CONTENT_LENGTH CONTENT_TYPE HTTP_X_PSGI_TEST psgi.url_scheme psgi.multithread
            psgi.multiprocess psgi.run_once psgi.nonblocking psgi.streaming psgix.input.buffered psgix.cleanup);
        my $body = join '', map { "$_=" . (defined $env->{$_} ? $env->{$_} : '(undef)') . "\n" } @keys;
        $body .= "psgi.version=" . join('.', @{ $env->{'psgi.version'} }) . "\n";
        $body .= "input.can_read=" . ($env->{'psgi.input'}->can('read') ? 1 : 0) . "\n";
        $body .= "io=" . (ref $env->{'psgix.io'} ? 1 : 0) . "\n";
        $body .= "logger=" . (ref $env->{'psgix.logger'} eq 'CODE' ? 1 : 0) . "\n";
        return [200, ['Content-Type' => 'text/plain'], [$body]];
    },
    '/echo' => sub {
        my $env = shift;
        my ($body, $chunk) = ('', '');
        while ($env->{'psgi.input'}->read($chunk, 7)) { $body .= $chunk }
        return [200, ['Content-Type' => 'application/octet-stream', 'X-Read' => length $body], [$body]];
    },
    '/array' => sub { [201, ['Content-Type' => 'text/plain', 'X-Multi' => 'a', 'X-Multi' => 'b'], ['one ', 'two ', 'three']] },
    '/file' => sub {
        my $env = shift;
        my $fh = IO::File->new($env->{QUERY_STRING}, '<') or die "cannot open $env->{QUERY_STRING}: $!";
        Plack::Util::set_io_path($fh, $env->{QUERY_STRING});
        return [200, ['Content-Type' => 'text/plain'], $fh];
    },
    '/getline' => sub { [200, ['Content-Type' => 'text/plain'], GetlineBody->new("line 1\n", "line 2\n")] },
    '/closed' => sub { [200, ['Content-Type' => 'text/plain'], ["closed=$closed"]] },
    '/stream' => sub {
        return sub {
            my $respond = shift;
            my $writer = $respond->([200, ['Content-Type' => 'text/plain']]);
            $writer->write("part $_\n") for 1 .. 3;
            $writer->close;
        };
    },
    '/stream-wait' => sub {
        my $env = shift;
        # The first part must reach the client before the app goes on: it waits (10 s at most) for the
        # file the client creates once it has read it.
        my $file = $env->{QUERY_STRING};
        return sub {
            my $writer = shift->([200, ['Content-Type' => 'text/plain']]);
            $writer->write("first\n");
            for (1 .. 200) { last if -e $file; select undef, undef, undef, 0.05 }
            $writer->write(-e $file ? "second\n" : "timed out\n");
            $writer->close;
        };
    },
    '/delayed' => sub {
        return sub { my $respond = shift; $respond->([202, ['Content-Type' => 'text/plain'], ['later']]) };
    },
    '/hints' => sub {
        my $env = shift;
        my $sent = $env->{'psgix.informational'}
            ? $env->{'psgix.informational'}->(103, ['Link' => '</style.css>; rel=preload; as=style']) : 0;
        return [200, ['Content-Type' => 'text/plain'], ["sent=" . ($sent ? 1 : 0)]];
    },
    '/io' => sub {
        my $env = shift;
        my $io = $env->{'psgix.io'} or return [501, ['Content-Type' => 'text/plain'], ['no psgix.io']];
        return sub {
            # Its own protocol on the connection: a 101, then an echo of each line until "bye".
            syswrite $io, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n";
            while (defined(my $line = <$io>)) {
                print $io "echo: $line";
                last if $line eq "bye\n";
            }
            close $io;
        };
    },
    '/log' => sub {
        my $env = shift;
        $env->{'psgix.logger'}->({ level => 'warn', message => 'a message for psgix.logger' });
        my $refused = !eval { $env->{'psgix.logger'}->({ level => 'loud', message => 'x' }); 1 };
        return [200, ['Content-Type' => 'text/plain'], [$refused ? 'bad level refused' : 'bad level taken']];
    },
    '/dropped' => sub { sub { } },
    '/die' => sub { die "the app died on purpose\n" },
    '/bad' => sub { return "not a response" },
    '/errors' => sub {
        my $env = shift;
        $env->{'psgi.errors'}->print("a message for psgi.errors\n");
        return [200, ['Content-Type' => 'text/plain'], ['logged']];
    },
    '/cleanup' => sub {
        my $env = shift;
        push @{ $env->{'psgix.cleanup.handlers'} }, sub { push @cleaned, $_[0]->{QUERY_STRING} };
        return [200, ['Content-Type' => 'text/plain'], ['cleanup queued']];
    },
    '/cleaned' => sub { [200, ['Content-Type' => 'text/plain'], [join ',', @cleaned]] },
);

sub {
    my $env = shift;
    my $route = $routes{ $env->{PATH_INFO} } or return [404, ['Content-Type' => 'text/plain'], ['no such path']];
    return $route->($env);
};
