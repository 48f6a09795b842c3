"""Every refusal in one shape: `{"error": one line}`, or OpenAI's error object on its /v1/ routes,
so that the `openai` client raises its own exceptions with our line as their message."""

from __future__ import annotations

from starlette.responses import JSONResponse

OPENAI_PREFIX = "/v1/"

_OPENAI_TYPES = {401: "authentication_error", 429: "rate_limit_error", 500: "server_error"}


def error_response(path: str, message: str, status: int, headers: dict | None = None,
                   param: str | None = None) -> JSONResponse:
    message = " ".join(message.split())  # one line, whatever the message held
    if path.startswith(OPENAI_PREFIX):
        body = {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "invalid_request_error"),
                          "param": param, "code": "invalid_api_key" if status == 401 else None}}
    else:
        body = {"error": message}
    return JSONResponse(body, status_code=status, headers=headers)
