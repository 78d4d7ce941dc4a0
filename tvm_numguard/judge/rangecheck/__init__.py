"""Operator numerics: valid domains of vulnerable Relax operators."""

from .domains import DOMAINS, Domain, InvalidCall, check_domains, domain_of, find_invalid_ops, is_vulnerable

__all__ = ["DOMAINS", "Domain", "InvalidCall", "check_domains", "domain_of", "find_invalid_ops", "is_vulnerable"]
