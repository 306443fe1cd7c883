#include "command.hpp"

int main(int argc, char** argv) { return prescient::cli::run_cli(argc, argv); }
