//===- Launcher.h - starts and watches the ranks of a job -------*- C++ -*-===//
//
// The launcher side of pp-run: starts one process per rank on this machine
// with torchrun's variables and waits for them.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RUN_LAUNCHER_H
#define PP_TOOLS_PP_RUN_LAUNCHER_H

#include <string>
#include <vector>

/// Starts `count` ranks, each running this program with `arguments` (the
/// command line, program name first) and RANK, LOCAL_RANK, WORLD_SIZE,
/// MASTER_ADDR and MASTER_PORT set, and waits for them; when one fails the
/// others are stopped. Returns the launcher's exit code.
int launchRanks(const std::vector<std::string> &arguments, int count);

#endif // PP_TOOLS_PP_RUN_LAUNCHER_H
