"""The coverage yardstick (issue 21): Label Studio's own templates, exports written in
Label Studio's exact result format by a generator of our own, and ``ls-agreement report``
held to what the three scenarios (identical, careless, random) must give.

Modules: ``labeling_config`` (what the generator reads from a config), ``task_data``
(task data per object tag), ``shapes`` (region geometry per tool), ``answers``
(classification values), ``generator`` (scenarios -> a JSON export), ``ls_templates``
(the templates the installed Label Studio ships), ``extra_configs`` (tags no template
uses), ``report_checks`` (what a report must show per scenario), ``typical`` (random data
of typical chance agreement, by the ``krippendorff`` package), ``summary`` (the table for
the integrator).
"""
