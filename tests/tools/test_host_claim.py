"""The host claim names the cluster folder whose real nodes changed the host; only that one drops it."""

from __future__ import annotations

from tools.localcluster import host_claim


def test_the_claim_names_the_holder_and_only_the_holder_releases_it(tmp_path):
    claim = tmp_path / "run" / "real-nodes-cluster"
    first, second = tmp_path / "checkout-a" / ".cluster", tmp_path / "checkout-b" / ".cluster"
    assert host_claim.claimant(claim) is None

    host_claim.take(first, claim)
    assert host_claim.claimant(claim) == first.resolve()
    host_claim.release(second, claim)
    assert host_claim.claimant(claim) == first.resolve(), "another cluster dropped a claim not its own"

    host_claim.take(second, claim)
    assert host_claim.claimant(claim) == second.resolve()
    host_claim.release(second, claim)
    assert host_claim.claimant(claim) is None
    assert not claim.parent.exists(), "the claim's folder (or a partial claim) was left on the host"
