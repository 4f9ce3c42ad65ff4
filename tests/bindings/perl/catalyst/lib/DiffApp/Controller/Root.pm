package DiffApp::Controller::Root;
# The pages of the differential test: the welcome page, a form (GET and POST), an upload, a redirect, a
# static file, a 404 and an action that dies.
use Moose;
use namespace::autoclean;
use Digest::MD5 qw(md5_hex);
use IO::File;

BEGIN { extends 'Catalyst::Controller' }

__PACKAGE__->config(namespace => '');

sub index :Path :Args(0) {
    my ($self, $c) = @_;
    $c->response->body($c->welcome_message);
}

sub form :Local :Args(0) {
    my ($self, $c) = @_;
    my $p = $c->request->body_parameters;
    my $q = $c->request->query_parameters;
    $c->response->content_type('text/plain; charset=utf-8');
    $c->response->body(join '', $c->request->method, "\n",
        map({ "query $_=$q->{$_}\n" } sort keys %$q), map({ "body $_=$p->{$_}\n" } sort keys %$p));
}

sub upload :Local :Args(0) {
    my ($self, $c) = @_;
    my $u = $c->request->upload('file') or do {
        $c->response->status(400);
        return $c->response->body("no file\n");
    };
    $c->response->content_type('text/plain');
    $c->response->body(sprintf "%s %s %d %s note=%s\n", $u->filename, $u->type, $u->size, md5_hex($u->slurp),
        $c->request->body_parameters->{note} // '');
}

sub go_on :Path('redirect') :Args(0) {
    my ($self, $c) = @_;
    $c->response->redirect($c->uri_for('/form', { from => 'redirect' }));
}

sub static :Local {
    my ($self, $c, @path) = @_;
    my $file = $c->path_to('root', 'static', grep { $_ ne '..' } @path);
    return $self->default($c) unless -f $file;
    $c->response->content_type('text/plain');
    $c->response->body(IO::File->new("$file", '<'));
}

sub broken :Local :Args(0) { die "the Catalyst action died on purpose\n" }

sub default :Path {
    my ($self, $c) = @_;
    $c->response->body('Page not found');
    $c->response->status(404);
}

__PACKAGE__->meta->make_immutable;

1;
