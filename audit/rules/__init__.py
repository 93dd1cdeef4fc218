"""The rules engine: rules are YAML data (``rules/``), evaluated over code units, log events and runs.

Modules: :mod:`~audit.rules.spec` (typed rule specs), :mod:`~audit.rules.loader`
(``find_rules_root``, ``load_ruleset``), :mod:`~audit.rules.matchers` (compiled query, regex,
builtin, all/any/not matchers), :mod:`~audit.rules.match` (``Match``, ``Capture``),
:mod:`~audit.rules.engine` (``evaluate_rules``) and :mod:`~audit.rules.testing`
(``run_rule_tests`` for the rules' self-tests). Nothing is imported here, so importing a
submodule stays cheap and free of cycles with :mod:`audit.checks`.
"""
