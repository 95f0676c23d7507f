"""The verification page, served for people (not part of the API):

    GET /verify  -> the page (text/html), which fetches the card a bundle names from this service

It is verifier_client.page's page, built once per application; the Content-Security-Policy it states is
sent as a header too, so the browser lets it connect to this origin only, and only for the card. A page
served by the bank is as trustworthy as the bank: `fairproof export-page` writes the same checks as a file
whose SHA-256 anyone can publish.
"""
from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from commitments.api import API_PREFIX
from verifier_client.page import PageError, VerificationPage, build_page

from .errors import Unavailable


def page_router() -> APIRouter:
    router = APIRouter(tags=["verification page"])
    built: list[VerificationPage] = []  # this application's page, built on first request

    @router.get("/verify", response_class=HTMLResponse, include_in_schema=False)
    def verification_page() -> HTMLResponse:
        """The verification page: a customer checks their certificate in the browser."""
        if not built:
            try:
                built.append(build_page(card_url=f"{API_PREFIX}/models/{{model_id}}/card"))
            except PageError as exc:
                raise Unavailable(f"the verification page is not installed here: {exc}") from None
        page = built[0]
        return HTMLResponse(page.html, headers={
            "Content-Security-Policy": page.csp, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})

    return router
