package ApacheFcgid;
# Apache with mod_fcgid on a free loopback port, from its own configuration in a temporary directory: the
# shared-hosting setup of docs/deploy/apache (httpd-fcgid.conf, a .htaccess from htaccess-fcgid beside each
# app.fcgi), as tests/adapters/fastcgi/fronts.cpp starts it for the C++ tests. mod_fcgid starts app.fcgi
# on the first request of its directory; its stderr goes to Apache's error log.
use strict;
use warnings;
use File::Temp qw(tempdir);
use FindBin;
use POSIX ();
use Test::TCP qw(empty_port wait_port);

my $deploy = "$FindBin::Bin/../../../docs/deploy/apache";

sub available {
    return 'apache2 is not installed' unless grep { -x "$_/apache2" } '/usr/sbin', split /:/, $ENV{PATH};
    return 'mod_fcgid is not installed' unless -f '/usr/lib/apache2/modules/mod_fcgid.so';
    return '';
}

sub _render {
    my ($file, %vars) = @_;
    open my $in, '<', $file or die "$file: $!";
    my $text = do { local $/; <$in> };
    $text =~ s/\@([A-Z_]+)\@/defined $vars{$1} ? $vars{$1} : die "$file: no value for \@$1\@\n"/ge;
    return $text;
}

sub _write {
    my ($file, $text, $mode) = @_;
    open my $out, '>', $file or die "$file: $!";
    print $out $text;
    close $out or die "$file: $!";
    chmod $mode, $file if defined $mode;
}

# %sites: URL directory ('' for the root, '/app') => the shell script mod_fcgid runs as app.fcgi there.
sub start {
    my ($class, %sites) = @_;
    my $dir = tempdir(CLEANUP => 1);
    chmod 0777, $dir;    # Apache's User (nobody, when the test runs as root) runs the apps
    my $docroot = "$dir/site";
    mkdir $_ for $docroot, "$dir/fcgid";
    chmod 0777, "$dir/fcgid";
    my %vars = (DIR => $dir, DOCROOT => $docroot, IO_TIMEOUT => 30);
    for my $mount (sort keys %sites) {
        mkdir "$docroot$mount" unless -d "$docroot$mount";
        _write("$docroot$mount/.htaccess", _render("$deploy/htaccess-fcgid", %vars));
        _write("$docroot$mount/app.fcgi", $sites{$mount}, 0755);
    }
    my $port = empty_port();
    my $mods = '/usr/lib/apache2/modules';
    my $conf = join '', map { "$_\n" }
        qq{ServerRoot "$dir"}, qq{DefaultRuntimeDir "$dir"}, "Mutex file:$dir", qq{PidFile "$dir/httpd.pid"},
        "Listen 127.0.0.1:$port", 'ServerName 127.0.0.1', qq{ErrorLog "$dir/error.log"}, 'LogLevel warn',
        (map { "LoadModule ${_}_module $mods/mod_$_.so" } qw(mpm_event authz_core mime dir)),
        'TypesConfig /etc/mime.types', ($> == 0 ? ('User nobody', 'Group nogroup') : ()),
        qq{DocumentRoot "$docroot"}, 'DirectoryIndex disabled', 'Timeout 10', 'KeepAlive On',
        _render("$deploy/httpd-fcgid.conf", %vars);
    _write("$dir/httpd.conf", $conf);
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open STDOUT, '>', "$dir/console.log";
        open STDERR, '>&', \*STDOUT;
        { exec { 'apache2' } 'apache2', '-f', "$dir/httpd.conf", '-DFOREGROUND' }
        POSIX::_exit(127);
    }
    my $self = bless { dir => $dir, port => $port, pid => $pid }, $class;
    wait_port({ host => '127.0.0.1', port => $port, max_wait => 10 })
        or die "apache2 did not start: " . $self->console . $self->error_log;
    return $self;
}

sub port { $_[0]{port} }
sub dir  { $_[0]{dir} }

sub _slurp { open my $in, '<', $_[0] or return ''; local $/; return scalar <$in> }
sub error_log { _slurp("$_[0]{dir}/error.log") }
sub console   { _slurp("$_[0]{dir}/console.log") }

sub stop {
    my $self = shift;
    my $pid = delete $self->{pid} or return;
    kill 'TERM', $pid;
    waitpid $pid, 0;
}

sub DESTROY { $_[0]->stop }

1;
