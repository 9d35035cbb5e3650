"""Bearer tokens verified against the issuer's published keys, like the HTTP API's JWT authorizer.

A Lambda Function URL has no JWT authorizer, so an endpoint behind one checks tokens itself,
and by the same rules, or the two doors into the product would let different people in:

- the signature, with the issuer's key named by the token's `kid`, in an allowed algorithm:
  RS256 by default, as the HTTP API's authorizer verifies RSA signatures only; ES256 and
  the other RSA and EC algorithms where `CHATMEMORY_JWT_ALGORITHMS` names them (for an
  issuer whose tokens reach only this endpoint) — never `none`, never HS*: a public key is
  not an HMAC secret;
- `iss` equal to the configured issuer; `exp` required and in the future; `nbf`/`iat`, when
  present, not in the future (all with a small leeway for clock skew);
- `aud` matching one of the configured audiences — or, when the token has no `aud` (Amazon
  Cognito access tokens), its `client_id`, which is what API Gateway checks in that case;
- a non-empty `sub`: the user id is taken from it and from nothing else;
- a lifetime of at most a year (`identity.MAX_TOKEN_LIFETIME`, from `iat`, or from now):
  the one cap every door applies, the HTTP API's handlers included.

Keys are found as API Gateway finds them: the issuer's OpenID discovery document
(`<issuer>/.well-known/openid-configuration`) names its `jwks_uri` — Cognito publishes keys
at `<issuer>/.well-known/jwks.json`, but Okta, Entra ID and Keycloak publish them elsewhere.
The document must name the configured issuer itself (OpenID Connect Discovery §4.3), so a
document served for another issuer cannot swap in its keys. The key set is read through
PyJWT's PyJWKClient and cached for an hour (re-fetched sooner when a token names a key not
seen yet); the discovery document is kept once read, and read again only if it failed.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

import jwt
from jwt import PyJWKClient
from jwt.exceptions import PyJWKClientConnectionError, PyJWKClientError

from chatmemory.api.identity import InvalidToken, lifetime_problem

# What the HTTP API's JWT authorizer accepts (RSA only): the same rules on both paths.
DEFAULT_ALGORITHMS = ("RS256",)
# Every algorithm that may be allowed: asymmetric signatures only.
ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "ES256", "ES384", "ES512"})
DISCOVERY_PATH = "/.well-known/openid-configuration"
KEYS_LIFESPAN_SECONDS = 3600
KEYS_TIMEOUT_SECONDS = 5  # a request waits on the fetch; never for long
MAX_DOCUMENT_BYTES = 1 << 20  # a discovery document or key set is a few KB

# Reads one JSON document by its https URL (tests serve them without a network).
JsonFetcher = Callable[[str], dict[str, Any]]


class KeysUnavailable(Exception):
    """The issuer's keys could not be fetched: the token may be fine, we cannot tell now."""


def fetch_json(url: str) -> dict[str, Any]:
    """One JSON object over https, within the keys' timeout and size limit."""
    if not url.startswith("https://"):
        raise ValueError("only https URLs are fetched")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 - https only, checked above
    with urllib.request.urlopen(request, timeout=KEYS_TIMEOUT_SECONDS) as response:  # noqa: S310
        body = response.read(MAX_DOCUMENT_BYTES + 1)
    if len(body) > MAX_DOCUMENT_BYTES:
        raise ValueError("the document is too large")
    document = json.loads(body)
    if not isinstance(document, dict):
        raise ValueError("the document is not a JSON object")
    return document


class _IssuerKeys(PyJWKClient):
    """PyJWKClient over a key set URL, read with our fetch (https only, bounded)."""

    def __init__(self, uri: str, fetch: JsonFetcher) -> None:
        super().__init__(
            uri,
            cache_jwk_set=True,
            lifespan=KEYS_LIFESPAN_SECONDS,
            timeout=KEYS_TIMEOUT_SECONDS,
        )
        self._fetch = fetch

    def fetch_data(self) -> Any:
        try:
            return self._fetch(self.uri)
        except Exception as exc:
            raise PyJWKClientConnectionError(
                f"the JWKS fetch failed: {type(exc).__name__}"
            ) from exc


class _Discovery:
    """The issuer's key set, found through its discovery document once, then kept."""

    def __init__(self, issuer: str, fetch: JsonFetcher) -> None:
        self._issuer = issuer
        self._fetch = fetch
        self._keys: _IssuerKeys | None = None
        self._lock = threading.Lock()

    @property
    def discovery_url(self) -> str:
        return self._issuer.rstrip("/") + DISCOVERY_PATH

    def keys(self) -> _IssuerKeys:
        """The key set client; PyJWKClientConnectionError if discovery cannot be read now."""
        with self._lock:
            if self._keys is None:
                self._keys = _IssuerKeys(self._jwks_uri(), self._fetch)
            return self._keys

    def _jwks_uri(self) -> str:
        try:
            document = self._fetch(self.discovery_url)
        except Exception as exc:
            raise PyJWKClientConnectionError(
                f"the discovery fetch failed: {type(exc).__name__}"
            ) from exc
        uri = document.get("jwks_uri")
        # A document that names another issuer, or keys outside https, is not this issuer's.
        if document.get("issuer") != self._issuer:
            raise PyJWKClientConnectionError("the discovery document names another issuer")
        if not isinstance(uri, str) or not uri.startswith("https://"):
            raise PyJWKClientConnectionError("the discovery document has no https jwks_uri")
        return uri


class JwksVerifier:
    """Verifies bearer tokens from one issuer for a set of audiences; `verify` gives the claims."""

    def __init__(
        self,
        issuer: str,
        audiences: Iterable[str],
        *,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        fetch: JsonFetcher = fetch_json,
        leeway_seconds: int = 30,
    ) -> None:
        self.issuer = issuer
        self.audiences = frozenset(audiences)
        self.algorithms = tuple(algorithms)
        if not issuer or not self.audiences:
            raise ValueError("a verifier needs an issuer and at least one audience")
        if not self.algorithms or not set(self.algorithms) <= ASYMMETRIC_ALGORITHMS:
            raise ValueError(f"algorithms must be among {sorted(ASYMMETRIC_ALGORITHMS)}")
        self._leeway = leeway_seconds
        self._discovery = _Discovery(issuer, fetch)

    @property
    def discovery_url(self) -> str:
        """Where the issuer's keys are looked up first."""
        return self._discovery.discovery_url

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims; InvalidToken if it fails any check, KeysUnavailable if the
        issuer's keys cannot be fetched."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken("MalformedToken") from exc
        # Decided before any key is looked up, so `none` and HS* never reach a key at all.
        if header.get("alg") not in self.algorithms:
            raise InvalidToken("DisallowedAlgorithm")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("MissingKeyId")
        try:
            key = self._discovery.keys().get_signing_key(kid)
        except PyJWKClientConnectionError as exc:
            raise KeysUnavailable("the issuer's keys could not be fetched") from exc
        except (PyJWKClientError, jwt.PyJWTError) as exc:
            raise InvalidToken("UnknownKey") from exc
        try:
            # The key is bound to its own algorithm: a token whose header names another
            # algorithm than the key's is refused by PyJWT even if both are allowed here.
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(self.algorithms),
                issuer=self.issuer,
                leeway=self._leeway,
                options={"require": ["exp", "iss", "sub"], "verify_aud": False},
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(type(exc).__name__) from exc
        if not self._for_us(claims):
            raise InvalidToken("InvalidAudience")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("MissingSubject")
        problem = lifetime_problem(claims)
        if problem is not None:
            raise InvalidToken(problem)
        return claims

    def _for_us(self, claims: dict[str, Any]) -> bool:
        """API Gateway's rule: `aud` must match one audience; only without `aud`, `client_id`."""
        if "aud" in claims:
            audience = claims["aud"]
            values = [audience] if isinstance(audience, str) else audience
            return isinstance(values, list) and any(
                isinstance(value, str) and value in self.audiences for value in values
            )
        client_id = claims.get("client_id")
        return isinstance(client_id, str) and client_id in self.audiences
