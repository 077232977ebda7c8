// The page of a plan search (`dtsim search`, study/search.h): the Pareto
// front of throughput against devices as a chart and a table, then the
// ranked plans. One self-contained file: no script, no external resource.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "study/search.h"

namespace dtsim::report {

// throughput.svg: every feasible plan (devices on a log2 axis, samples/s),
// and the Pareto front. REQUIRES: one result per point of search.sweep.
std::string PlotSearch(const study::Search& search, const std::vector<study::PointResult>& results);

// index.html: the counts, the chart, the front and the first `top` ranked
// plans (study::RankSearch). When no plan fits: the counts and `no_fit` (what
// would fit: study::WhatWouldFit) instead of an empty chart and tables.
std::string SearchPageHtml(const study::Search& search, const std::vector<study::PointResult>& results,
                           const std::string& chart, std::size_t top,
                           const std::string& no_fit = "");

// One plan as text: "d=8 t=4 p=2 m=1 1f1b zero=1 recompute=selective".
std::string PlanLabel(const study::Search& search, std::size_t point);

}  // namespace dtsim::report
