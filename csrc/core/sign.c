/* sign.c -- HMAC-SHA1 / MD5 / base64 for Tablestore signatures. */
#include "sign.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

int sign_hmac_sha1_b64(const void *key, size_t klen, const void *msg, size_t n, char out[29]) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mlen = 0;
  if (klen > 0x7fffffff) return 0;
  if (!HMAC(EVP_sha1(), key, (int)klen, msg, n, mac, &mlen) || mlen != 20) return 0;
  return EVP_EncodeBlock((unsigned char *)out, mac, 20) == 28;
}

int sign_md5_b64(const void *p, size_t n, char out[25]) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  if (!EVP_Digest(p, n, d, &dlen, EVP_md5(), NULL) || dlen != 16) return 0;
  return EVP_EncodeBlock((unsigned char *)out, d, 16) == 24;
}

int sign_equal(const void *a, size_t alen, const void *b, size_t blen) {
  const unsigned char *x = a, *y = b;
  unsigned char diff = alen != blen;
  size_t i, n = alen < blen ? alen : blen;
  for (i = 0; i < n; i++) diff |= x[i] ^ y[i];
  return diff == 0;
}
