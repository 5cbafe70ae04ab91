// The API documentation page (/api/docs/): Swagger UI over the schema, with the session's CSRF token on
// the requests "Try it out" sends (the session authenticates them, as it does the schema's own fetch).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  if (!root || typeof SwaggerUIBundle === "undefined") return;
  SwaggerUIBundle({
    url: root.dataset.schemaUrl,
    domNode: root,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null, // Swagger UI's default asks validator.swagger.io about the schema: nothing leaves this site
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    requestInterceptor: (request) => {
      if (!["GET", "HEAD", "OPTIONS", undefined].includes(request.method)) {
        request.headers["X-CSRFToken"] = root.dataset.csrfToken;
      }
      return request;
    },
  });
});
