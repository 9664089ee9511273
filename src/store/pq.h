/*
 * pq.h - libpq, loaded the first time a PostgreSQL store or connection string is used (pq.c).
 *
 * The library does not link libpq: a program that opens only memory and LMDB stores never loads
 * it, nor the twenty-odd libraries it brings (Kerberos, LDAP, TLS), which cost each `prolly`
 * process on LMDB more than the rest of its start. The PostgreSQL store's files (pg*.c), open.c
 * and redact.c include this header in place of <libpq-fe.h>: it includes libpq's header for the
 * types and prototypes, and names every libpq function they call through the table prolly__pq,
 * filled once by prolly__pq_load, so calls keep their prototypes' types. A function missing from
 * PROLLY_PQ_FUNCS is called directly, and the link of the library without libpq fails on it.
 *
 *   PQ1 prolly__pq_load runs before the first call through the table on every path: at the start
 *       of prolly_store_pg_open, prolly__store_url_check of a PostgreSQL URL and
 *       prolly_redact_message; every other call is made by a store that opened.
 *   PQ2 The table is filled at most once per process (pthread_once) and never emptied: libpq
 *       stays loaded until the process exits. A failed load is final too, and every later call
 *       returns the same error.
 *
 * Thread rules: prolly__pq_load may be called from any thread, at once from several.
 */
#ifndef PROLLY_STORE_PQ_H
#define PROLLY_STORE_PQ_H

#include <libpq-fe.h>

/* The soname loaded: libpq's ABI has kept major version 5 since PostgreSQL 8.2. */
#define PROLLY_PQ_SONAME "libpq.so.5"

/* Every libpq function the library calls (X(name) each). */
#define PROLLY_PQ_FUNCS(X)                                                                         \
	X(PQclear)                                                                                     \
	X(PQcmdTuples)                                                                                 \
	X(PQconnectPoll)                                                                               \
	X(PQconnectStart)                                                                              \
	X(PQconnectStartParams)                                                                        \
	X(PQconnectdbParams)                                                                           \
	X(PQconninfo)                                                                                  \
	X(PQconninfoFree)                                                                              \
	X(PQconninfoParse)                                                                             \
	X(PQconsumeInput)                                                                              \
	X(PQdb)                                                                                        \
	X(PQenterPipelineMode)                                                                         \
	X(PQerrorMessage)                                                                              \
	X(PQfinish)                                                                                    \
	X(PQflush)                                                                                     \
	X(PQfreemem)                                                                                   \
	X(PQgetResult)                                                                                 \
	X(PQgetisnull)                                                                                 \
	X(PQgetlength)                                                                                 \
	X(PQgetvalue)                                                                                  \
	X(PQhost)                                                                                      \
	X(PQisBusy)                                                                                    \
	X(PQnfields)                                                                                   \
	X(PQntuples)                                                                                   \
	X(PQparameterStatus)                                                                           \
	X(PQpipelineSync)                                                                              \
	X(PQport)                                                                                      \
	X(PQresultErrorField)                                                                          \
	X(PQresultErrorMessage)                                                                        \
	X(PQresultStatus)                                                                              \
	X(PQsendPrepare)                                                                               \
	X(PQsendQueryParams)                                                                           \
	X(PQsendQueryPrepared)                                                                         \
	X(PQsetNoticeReceiver)                                                                         \
	X(PQsetnonblocking)                                                                            \
	X(PQsocket)                                                                                    \
	X(PQstatus)                                                                                    \
	X(PQtransactionStatus)

/* The table: one pointer per function, of the function's own type. */
typedef struct prolly__pq_api {
#define PROLLY_PQ_FIELD(name) __typeof__(name) *name;
	PROLLY_PQ_FUNCS(PROLLY_PQ_FIELD)
#undef PROLLY_PQ_FIELD
} prolly__pq_api;

extern prolly__pq_api prolly__pq;

/* Loads libpq and fills prolly__pq (PQ2): 1 if the table is filled, 0 if libpq cannot be loaded.
 * Sets no error (the redactor asks while a message is being made). */
int prolly__pq_ready(void);

/* prolly__pq_ready as an error: the library's usual return. Returns 0, or PROLLY_EUNSUPPORTED with the last-error
 * message naming the library and dlopen's reason (not installed: on Debian the package libpq5)
 * or the function this libpq lacks (pipeline mode needs libpq 14 or newer). */
int prolly__pq_load(void);

#ifndef PROLLY_PQ_LOADER /* pq.c fills the table under the functions' own names */
#define PQclear (prolly__pq.PQclear)
#define PQcmdTuples (prolly__pq.PQcmdTuples)
#define PQconnectPoll (prolly__pq.PQconnectPoll)
#define PQconnectStart (prolly__pq.PQconnectStart)
#define PQconnectStartParams (prolly__pq.PQconnectStartParams)
#define PQconnectdbParams (prolly__pq.PQconnectdbParams)
#define PQconninfo (prolly__pq.PQconninfo)
#define PQconninfoFree (prolly__pq.PQconninfoFree)
#define PQconninfoParse (prolly__pq.PQconninfoParse)
#define PQconsumeInput (prolly__pq.PQconsumeInput)
#define PQdb (prolly__pq.PQdb)
#define PQenterPipelineMode (prolly__pq.PQenterPipelineMode)
#define PQerrorMessage (prolly__pq.PQerrorMessage)
#define PQfinish (prolly__pq.PQfinish)
#define PQflush (prolly__pq.PQflush)
#define PQfreemem (prolly__pq.PQfreemem)
#define PQgetResult (prolly__pq.PQgetResult)
#define PQgetisnull (prolly__pq.PQgetisnull)
#define PQgetlength (prolly__pq.PQgetlength)
#define PQgetvalue (prolly__pq.PQgetvalue)
#define PQhost (prolly__pq.PQhost)
#define PQisBusy (prolly__pq.PQisBusy)
#define PQnfields (prolly__pq.PQnfields)
#define PQntuples (prolly__pq.PQntuples)
#define PQparameterStatus (prolly__pq.PQparameterStatus)
#define PQpipelineSync (prolly__pq.PQpipelineSync)
#define PQport (prolly__pq.PQport)
#define PQresultErrorField (prolly__pq.PQresultErrorField)
#define PQresultErrorMessage (prolly__pq.PQresultErrorMessage)
#define PQresultStatus (prolly__pq.PQresultStatus)
#define PQsendPrepare (prolly__pq.PQsendPrepare)
#define PQsendQueryParams (prolly__pq.PQsendQueryParams)
#define PQsendQueryPrepared (prolly__pq.PQsendQueryPrepared)
#define PQsetNoticeReceiver (prolly__pq.PQsetNoticeReceiver)
#define PQsetnonblocking (prolly__pq.PQsetnonblocking)
#define PQsocket (prolly__pq.PQsocket)
#define PQstatus (prolly__pq.PQstatus)
#define PQtransactionStatus (prolly__pq.PQtransactionStatus)
#endif

#endif
