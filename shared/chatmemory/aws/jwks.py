"""Bearer tokens verified against the issuer's published keys, like the HTTP API's JWT authorizer.

A Lambda Function URL has no JWT authorizer, so an endpoint behind one checks tokens itself,
and by the same rules, or the two doors into the product would let different people in:

- the signature, with the issuer's key named by the token's `kid` (RS256 or ES256 only —
  never `none`, never HS*: a public key is not an HMAC secret);
- `iss` equal to the configured issuer; `exp` required and in the future; `nbf`/`iat`, when
  present, not in the future (all with a small leeway for clock skew);
- `aud` matching one of the configured audiences — or, when the token has no `aud` (Amazon
  Cognito access tokens), its `client_id`, which is what API Gateway checks in that case;
- a non-empty `sub`: the user id is taken from it and from nothing else.

Keys come from `<issuer>/.well-known/jwks.json` through PyJWT's PyJWKClient, cached for the
process's life (re-fetched when they expire or a token names a key not seen yet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import jwt
from jwt import PyJWKClient
from jwt.exceptions import PyJWKClientConnectionError, PyJWKClientError

from chatmemory.api.identity import InvalidToken

ALGORITHMS = ("RS256",)  # what the HTTP API's JWT authorizer accepts: the same rules on both paths
JWKS_PATH = "/.well-known/jwks.json"
KEYS_LIFESPAN_SECONDS = 3600
KEYS_TIMEOUT_SECONDS = 5  # a request waits on the fetch; never for long

JwksFetcher = Callable[[], dict[str, Any]]


class KeysUnavailable(Exception):
    """The issuer's keys could not be fetched: the token may be fine, we cannot tell now."""


class _IssuerKeys(PyJWKClient):
    """PyJWKClient, with the fetch itself replaceable (tests serve a JWKS without a network)."""

    def __init__(self, uri: str, fetch: JwksFetcher | None) -> None:
        super().__init__(
            uri,
            cache_jwk_set=True,
            lifespan=KEYS_LIFESPAN_SECONDS,
            timeout=KEYS_TIMEOUT_SECONDS,
        )
        self._fetch = fetch

    def fetch_data(self) -> Any:
        if self._fetch is None:
            return super().fetch_data()
        try:
            return self._fetch()
        except Exception as exc:
            raise PyJWKClientConnectionError(
                f"the JWKS fetch failed: {type(exc).__name__}"
            ) from exc


class JwksVerifier:
    """Verifies bearer tokens from one issuer for a set of audiences; `verify` gives the claims."""

    def __init__(
        self,
        issuer: str,
        audiences: Iterable[str],
        *,
        fetch_jwks: JwksFetcher | None = None,
        leeway_seconds: int = 30,
    ) -> None:
        self.issuer = issuer
        self.audiences = frozenset(audiences)
        if not issuer or not self.audiences:
            raise ValueError("a verifier needs an issuer and at least one audience")
        self._leeway = leeway_seconds
        self._keys = _IssuerKeys(issuer.rstrip("/") + JWKS_PATH, fetch_jwks)

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims; InvalidToken if it fails any check, KeysUnavailable if the
        issuer's keys cannot be fetched."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken("MalformedToken") from exc
        # Decided before any key is looked up, so `none` and HS* never reach a key at all.
        if header.get("alg") not in ALGORITHMS:
            raise InvalidToken("DisallowedAlgorithm")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("MissingKeyId")
        try:
            key = self._keys.get_signing_key(kid)
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
                algorithms=list(ALGORITHMS),
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
