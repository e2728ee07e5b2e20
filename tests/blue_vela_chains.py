"""Blue Vela's power chain as it stood before 2 Dec 2026, for tests that need its RPP pairs to
bind: main redundancy removed on 2024-03-15 with the RPP pairs and rack cords still 2N (80
whole racks under the typed 1,830 kW), the RPPs re-fed on 2024-06-01, the UPS bypassed on
2024-09-01. The shipped chain (scenarios/blue_vela.yaml) reads the re-feed into the March stage,
which the typed plan needs. A ``--set`` override for ``twin.load_scenario``."""

OLD_CHAIN = ("site.power.chain.stages=["
             "{date: 2024-01-01, note: as built}, "
             "{date: 2024-03-15, note: main redundancy removed (RPP pairs still 2N), set: {transformers.redundancy: N, "
             "switchboards.redundancy: N, generators.redundancy: N, ups.topology: N}}, "
             "{date: 2024-06-01, note: RPPs re-fed, set: {rpps.redundancy: N, branch.redundancy: N}}, "
             "{date: 2024-09-01, note: UPS on maintenance bypass, set: {ups.mode: bypass}}]")
