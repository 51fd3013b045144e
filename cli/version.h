/* cli/version.h: the version the `syncspy` command says (--version, the Chrome export's
 * metadata). */
#ifndef SYNCSPY_CLI_VERSION_H
#define SYNCSPY_CLI_VERSION_H

#define SYNCSPY_VERSION "0.1.0"

#endif
