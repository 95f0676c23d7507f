"""The suite's two tiers: `integration` tests and the fast rest.

A test is `integration` when it trains or loads a real model, needs PostgreSQL, node, snarkjs, Chromium or a
running service, or sets up Groth16 keys for a real-size circuit. Most are found by the fixtures they use (the
closure, so a fixture built on the trained bank counts too) and by the peer markers; the modules and tests
listed below are integration for reasons no fixture name shows (a model trained inside the module, node or a
browser, a subprocess, a real-size circuit, a long sweep), found by timing every test on a two-core machine.
`pytest -m "not slow and not integration"` is the fast tier (a second `-m` replaces the one in addopts).
"""
from __future__ import annotations

from collections.abc import Iterable

import pytest

INTEGRATION = "integration"

# Fixtures that build a trained model (the bank and everything built on it) or a live service.
INTEGRATION_FIXTURES: frozenset[str] = frozenset({
    "bank",  # conftest.py: the trained, committed German (4,2) bank with real certificates
    "service_models",  # conftest.py: the service's models directory, trained, precomputed and keyed
    "bank_pipelines",  # bank_pipelines.py: two banks' trained models exported to ONNX
    "banks",  # test_independent_banks.py: independently trained banks
    "german42",  # test_fixed_point.py: a trained German (4,2) model
    "bank_workspace",  # test_guides.py: the bank guide's commands run on a trained pipeline
})

# Markers of tests that need a peer service or tool.
INTEGRATION_MARKERS: frozenset[str] = frozenset({"postgres", "snarkjs"})

# Modules whose every test is integration (file names under tests/).
INTEGRATION_MODULES: frozenset[str] = frozenset({
    # a model trained or imported inside the module (torch, ONNX, pgmpy)
    "test_audit_any_model.py", "test_bank_pipelines.py", "test_end_to_end.py", "test_geocert.py",
    "test_model_import.py", "test_model_io.py", "test_onnx_pipelines.py", "test_secrets_dir.py",
    "test_service_operations.py", "test_soundness.py", "test_training.py", "test_trees.py", "test_trees_import.py",
    "test_trees_onnx.py", "test_trees_product.py",
    # a subprocess service (`fairproof serve`), the guides' commands run end to end; node, Chromium, solc and
    # the EVM, tmux
    "test_guides.py", "test_http_limits.py",
    "test_conformance.py", "test_conformance_browser.py", "test_conformance_registry.py", "test_page_attestations.py",
    "test_evm_pairing.py",  # py-evm's own pairing precompile, pure Python, as the oracle
    "test_page_verify.py", "test_progress.py", "test_registry_claims.py", "test_registry_one_hot.py",
    "test_report.py", "test_solidity.py",
    # Groth16 setups and proofs of real-size statements, exact LP/MILP sweeps: seconds per test
    "test_backends.py", "test_bound_radius.py", "test_bound_radius_circuit.py", "test_bound_radius_slopes.py",
    "test_certify_cli.py", "test_exact_reference.py",
    "test_exact_vs_reference.py", "test_groth16.py", "test_k_discrimination.py", "test_persistence.py",
    "test_persistence_proof.py", "test_prepared_verifying_key.py", "test_projection_reference.py",
    "test_sensitive_one_hot.py", "test_spread.py", "test_statement_exact.py", "test_statement_malicious.py",
    "test_statement_per_slice.py", "test_transparency_log_store.py", "test_tree_statement.py",
})

# Single tests, every parametrization of them: "module::function" (or "module::Class::method"); each took
# three seconds or more on a busy two-core machine (a subprocess, a server, a real-size proof, a long sweep).
INTEGRATION_TESTS: frozenset[str] = frozenset({
    "test_checker.py::test_honest_certificates_are_accepted",
    "test_checker.py::test_property_honest_accepted_inflated_refused",
    "test_command_json.py::test_groth16_verbs_as_json",
    "test_command_startup.py::test_groth16_prove_loads_only_the_prover",
    "test_datasets.py::test_several_and_non_binary_sensitive_features",
    "test_datasets.py::test_widths_and_split_sizes",
    "test_distribution.py::test_a_learned_structure_keeps_the_dependencies_a_star_loses",
    "test_distribution.py::test_structured_rates_and_influence_run_on_the_same_machinery",
    "test_exact_certificate.py::test_exact_certificates_are_accepted_and_never_below_the_fast_radius",
    "test_explain.py::test_a_planted_region_is_found_and_described",
    "test_farkas.py::test_lp_certificates_verify_and_never_appear_for_feasible_systems",
    "test_fixed_base.py::test_window_tables_agree_with_one_multiplication_per_scalar",
    "test_forgeries.py::test_groth16_verify_refuses_non_canonical_public_json",
    "test_global_search.py::test_a_margin_difference_stopped_short_says_so",
    "test_global_search.py::test_counterexamples_are_real_and_fair_verdicts_survive_sampling",
    "test_global_search.py::test_the_maximum_margin_difference_equals_the_exact_reference",
    "test_group_counts.py::test_circuit_counts_equal_brute_force",
    "test_mcl_library.py::test_a_cache_without_its_ready_marker_is_not_loaded_and_is_rewritten",
    "test_mcl_library.py::test_a_damaged_library_falls_back_to_the_wheel",
    "test_mcl_library.py::test_the_first_process_caches_the_library_and_the_next_loads_it_without_the_wheel",
    "test_monitor.py::test_the_auditor_imports_nothing_of_the_bank_side",
    "test_msm_threads.py::test_capped_msm_equals_default_split",
    "test_msm_threads.py::test_native_msm_equals_mcl_mulvec",
    "test_native_ntt.py::test_a_machine_without_a_compiler_loads_the_library_built_for_the_same_source",
    "test_native_ntt.py::test_build_caches_by_content_hash_and_leaves_no_temporaries",
    "test_parity_schema.py::test_random_changes_of_a_one_hot_schema_are_judged_alike",
    "test_parity_schema.py::test_random_changes_of_a_schema_are_judged_alike",
    "test_pins.py::test_concurrent_customers_lose_no_pin",
    "test_precompute.py::test_interrupted_run_resumes_to_the_same_rows",
    "test_precompute.py::test_memo_certifier_is_safe_across_threads",
    "test_precompute.py::test_models_share_a_store_without_mixing",
    "test_probabilistic.py::test_sampling_lies_within_its_stated_interval",
    "test_proof_system.py::test_statement_proof_through_the_seam",
    "test_prove_coset_basis.py::test_mcl_and_reference_proofs_are_byte_identical",
    "test_prove_coset_basis.py::test_zkey_proofs_verify_on_both_backends",
    "test_ptau_dev.py::test_verify_ptau_refuses_one_point_changed",
    "test_queue_schema.py::test_the_queue_schema_is_created_once_and_another_version_stops_serve_and_worker",
    "test_radius_defaults.py::test_a_missing_bucket_is_one_line_naming_what_to_set_up",
    "test_radius_defaults.py::test_precompute_finds_both_statements_buckets_for_a_hybrid_model",
    "test_relation_arrays.py::test_a_proof_from_the_array_form_is_the_proof_from_the_tuple_form",
    "test_schema.py::test_a_shipped_datasets_schema_encodes_every_record_as_its_loader",
    "test_statement.py::test_honest_certificate_satisfies_the_statement",
    "test_statement.py::test_setup_builds_the_same_r1cs_without_values",
    "test_statement_differential.py::test_circuit_accepts_exactly_what_the_checker_accepts",
    "test_statement_groth16.py::test_statement_proof_verifies_and_binds_public_inputs",
    "test_transparency_crash.py::test_sigkill_during_appends_leaves_a_whole_log",
    "test_verifier_http.py::test_a_200_mb_response_keeps_the_client_under_100_mb_rss",
    "test_verifier_http.py::test_the_client_imports_nothing_of_the_bank_side",
    "test_vocabulary.py::test_the_radius_vocabulary_is_defined_once",
    "test_zkey_mpc.py::test_our_ceremony_verifies_and_tampered_twins_are_refused",
    "test_zkey_mpc.py::test_reference_backend_agrees",
})


def short_name(item: pytest.Item) -> str:
    """"module::function" of a collected test: its file name and node name without parameters."""
    return f"{item.path.name}::{item.nodeid.split('::', 1)[1].split('[', 1)[0]}"


def is_integration(name: str, fixturenames: Iterable[str], markers: Iterable[str]) -> bool:
    """Whether a test ("module::function", its fixture closure, its markers' names) is integration."""
    return (name.split("::", 1)[0] in INTEGRATION_MODULES
            or name in INTEGRATION_TESTS
            or not INTEGRATION_FIXTURES.isdisjoint(fixturenames)
            or not INTEGRATION_MARKERS.isdisjoint(markers))


def mark_integration(items: Iterable[pytest.Item]) -> None:
    """Adds the `integration` marker to every collected integration test."""
    for item in items:
        markers = {mark.name for mark in item.iter_markers()}
        if is_integration(short_name(item), getattr(item, "fixturenames", ()), markers):
            item.add_marker(INTEGRATION)
