# Which tests are slow, and which tests of GoogleTest programs start mpirun,
# by program (cmake/DtsimTestLabels.cmake reads these lists; docs/testing.md).
#
# DTSIM_SLOW_TESTS_<program>: tests over 2 s in a full `ctest -j2` run on the
# 2-core development machine while other builds shared it (load average
# about 9), listed slowest first with the seconds measured; re-measure with
# `ctest --test-dir build -j2` then `scripts/test_times.py --over 2`.
set(DTSIM_SLOW_TESTS_allreduce_test
  AllreduceResults.MatchTheCommittedReportAndDocs  # 10.1 s
)
set(DTSIM_SLOW_TESTS_bounds_cli_test
  Bounds.FitNamesRowsAndFailures  # 42.2 s
)
set(DTSIM_SLOW_TESTS_cli_test
  Cli.TtaCheckScriptPredictsTheRealRunsUpdates  # 109.8 s
  Cli.SweepAndSearchOverMpiRanksWriteWhatOneProcessWrites  # 30.7 s
  Cli.ResumeFallsBackToTheNewestCheckpointValidOnEveryRank  # 19.9 s
  Cli.ExecEvaluatesOnTheTestSplitAndStopsAtItsTarget  # 15.7 s
  Cli.TtaProxyReproducesExecsHeldOutCurve  # 15.3 s
  Cli.TtaTrainsOnFashionMnistToAHeldOutAccuracy  # 15.1 s
  Cli.SearchRanksPlansAndWritesItsFiles  # 12.2 s
  Cli.ValidateComparesPredictionAndMeasurement  # 8.5 s
  Cli.ValidateWritesIntoOutAndPredictsTheOverlapTheRunHad  # 8.2 s
  Cli.CalibrateWithTwoRanksMeasuresTheLink  # 6.5 s
  Cli.ExecMovesThePredictedBytesPerServer  # 5.5 s
  Cli.FitWritesAProfileScenariosCanNameAndIsDeterministic  # 5.5 s
  Cli.ExecWritesATensorBoardEventFile  # 5.0 s
  Cli.ValidateRefusesAProfileOfTheOtherKernels  # 4.5 s
  Cli.InterruptedExecRemovesTheNetwork  # 4.1 s
  Cli.ThreadsPerRankAreDeterministicAndMatchTheProfile  # 4.1 s
  Cli.KilledExecInEmulatedNetworkLeavesNoRanksAndItsNetworkGoesNext  # 4.1 s
  Cli.ExecTrainsOnAnIdxFolder  # 3.6 s
  Cli.EveryShippedScenarioProducesAReport  # 3.6 s
  Cli.ExecInEmulatedNetworkRecordsItAndRemovesIt  # 3.4 s
  Cli.ProfileThenPriceFromTheTable  # 2.5 s
  Cli.ShippedSweepsRun  # 2.4 s
  Cli.CalibrateWritesAProfileScenariosCanUse  # 2.3 s
  Cli.ExecRanksWithoutTheMpiModuleSayWhy  # 2.2 s
)
set(DTSIM_SLOW_TESTS_comm_test
  comm_test_np4  # 8.1 s
)
set(DTSIM_SLOW_TESTS_docs_test
  StatedFacts.MegatronLmOnVtrain  # 10.8 s
  ReadmeFigures.ServersAndTailsTable  # 2.8 s
)
set(DTSIM_SLOW_TESTS_exec_calibrate_test
  CalibrateTest.QuickDeviceMeasurementIsAValidProfile  # 6.9 s
)
set(DTSIM_SLOW_TESTS_exec_data_test
  Idx.ReadsDebiansFashionMnist  # 2.5 s
)
set(DTSIM_SLOW_TESTS_exec_executor_test
  exec_executor_test_np4  # 43.0 s
  exec_executor_test_np2  # 27.7 s
  exec_executor_test_np1  # 10.5 s
)
set(DTSIM_SLOW_TESTS_exec_ps_executor_test
  exec_ps_executor_test_np3  # 15.1 s
  exec_ps_executor_test_np2  # 10.2 s
  exec_ps_executor_test_np4  # 9.5 s
)
set(DTSIM_SLOW_TESTS_exec_runtime_test
  ModelRuntime.CifarCnnLearnsClassImages  # 11.8 s
  ModelRuntime.MlpLearnsTheTeacher  # 5.2 s
)
set(DTSIM_SLOW_TESTS_exec_train_test
  CheckpointTest.KilledWriterNeverLeavesATornFile  # 26.6 s
)
set(DTSIM_SLOW_TESTS_keys_test
  ScenarioKeys.EveryKeyChangesThePredictionOrIsRefused  # 4.9 s
)
set(DTSIM_SLOW_TESTS_report_test
  SweepPageInBrowser.SortsByTheFragmentsColumn  # 2.1 s
)
set(DTSIM_SLOW_TESTS_sweep_test
  Search.RecommendedPlansEqualTheFullSimulationOfThePlan  # 12.7 s
  Search.EveryRankedPlanFitsAndDividesItsDevicesAndBatch  # 4.9 s
  Search.DataParallelismWinsForAModelThatFitsOnAFastLink  # 2.7 s
)
set(DTSIM_SLOW_TESTS_tta_test
  TimeToAccuracy.PicksTheBestAveragingPeriodOfAKnownTradeOff  # 2.3 s
)

# DTSIM_MPI_TESTS_<program>: tests that started mpirun (dtsim over more than
# one rank) in that run, seen by watching for mpirun processes under each
# test. The dtsim_mpi_test programs are labelled mpi as a whole.
set(DTSIM_MPI_TESTS_cli_test
  Cli.ExecWritesATensorBoardEventFile
  Cli.ExecRanksWithoutTheMpiModuleSayWhy
  Cli.CalibrateWithTwoRanksMeasuresTheLink
  Cli.ExecTrainsAndWritesPerRankTimes
  Cli.ValidateComparesPredictionAndMeasurement
  Cli.ValidateWritesIntoOutAndPredictsTheOverlapTheRunHad
  Cli.SweepAndSearchOverMpiRanksWriteWhatOneProcessWrites
  Cli.ExecInEmulatedNetworkRecordsItAndRemovesIt
  Cli.InterruptedExecRemovesTheNetwork
  Cli.ResumeFallsBackToTheNewestCheckpointValidOnEveryRank
  Cli.ExecErrorOnOneRankIsExit2WithItsPlace
  Cli.TiedTransformerPipelineTrainsLikeOneDevice
  Cli.KilledExecLeavesNoMpirunOrRanks
  Cli.KilledExecInEmulatedNetworkLeavesNoRanksAndItsNetworkGoesNext
  Cli.TtaProxyReproducesExecsHeldOutCurve
  Cli.ExecMovesThePredictedBytesPerServer
  Cli.ExecEvaluatesOnTheTestSplitAndStopsAtItsTarget
  Cli.TtaCheckScriptPredictsTheRealRunsUpdates
)
