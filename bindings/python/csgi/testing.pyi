from typing import Sequence

class TestResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    streamed: bool
    closed: bool
    file: bool
    errors: str
    def header(self, name: str) -> str: ...

def call(app: object, request: str, headers: Sequence[tuple[str, str]] = ..., body: bytes = ...,
         script_name: str = ..., timeout: float = ...) -> TestResponse: ...
