"""Widgets for the lessons: ClusterGraph, RulesView, ConntrackView, charts, presenter mode and lesson helpers.

Every view is an ipywidgets widget that also leaves a static HTML picture in saved notebooks and exports.
"""
from labsupport.widgets.charts import Chart, bar_chart, connection_cost, human_bytes, line_chart, rule_counts
from labsupport.widgets.cluster_graph import ClusterGraph
from labsupport.widgets.present import presenter, presenting
from labsupport.widgets.rules import ConntrackView, RulesView
from labsupport.widgets.snapshot import Snapshot

__all__ = ["ClusterGraph", "RulesView", "ConntrackView", "Chart", "line_chart", "bar_chart", "rule_counts",
           "connection_cost", "human_bytes", "presenter", "presenting", "Snapshot"]
