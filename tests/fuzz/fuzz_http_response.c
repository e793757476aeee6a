/* Fuzz target for proxy/net/http_parse.c on upstream responses.
 *
 * The driver is tests/fuzz/fuzz_http_request.c, built for responses: the
 * same properties (fragmentation never changes the outcome, the API's
 * promises, the header cap), plus http_parser_finish() at the end of the
 * input as at the upstream's close, and a run where every response answers
 * a HEAD (on_headers returns 1). One driver, so the two cannot drift apart.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=http_response) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#define FUZZ_HTTP_RESPONSE 1
#include "fuzz_http_request.c"
