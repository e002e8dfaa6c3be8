/* peak_rss.c — runs a command and writes its peak resident size (getrusage's ru_maxrss of the
 * waited-for child, in KiB) to a file, for the memory-bound tests (merge_memory_test.sh).
 * Usage: peak_rss OUTFILE COMMAND [ARG...]; exits with the command's status. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss OUTFILE COMMAND [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("peak_rss: exec");
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("peak_rss: waitpid");
        return 2;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0) {
        perror("peak_rss: getrusage");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%ld\n", (long)ru.ru_maxrss) < 0 || fclose(f) != 0) {
        perror("peak_rss: writing the result");
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
